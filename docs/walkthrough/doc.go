// Package walkthrough holds the runnable examples of ingot's walkthrough pages.
package walkthrough

// Package chart draws the repro's charts as SVG documents: live buffer objects
// against tokens for one or more runs, with the resource limit and each leaking run's
// predicted crash marked. SVG is the one chart format: a browser, an editor and
// GitHub show it, it scales, and its text stays text (searchable, testable). The
// command line and the browser playground draw with the same code.
package chart

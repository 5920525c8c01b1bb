package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	verbose := flag.Bool("v", false, "print the number of packages checked and the time taken")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: darwincheck [-v] [packages]")
		flag.PrintDefaults()
	}
	flag.Parse()

	start := time.Now()
	res, err := Check(".", flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, d := range res.Diagnostics {
		fmt.Println(d)
	}
	if *verbose {
		fmt.Fprintf(os.Stderr, "darwincheck: %d packages checked for darwin/arm64 in %.1fs, %d problems\n",
			res.Packages, time.Since(start).Seconds(), len(res.Diagnostics))
	}
	if len(res.Diagnostics) > 0 {
		os.Exit(1)
	}
}

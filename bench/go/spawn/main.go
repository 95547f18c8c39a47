// SPDX-License-Identifier: MIT
// spawn - the Go peer of bench/spawn.c: create and finish goroutines that do
// nothing but signal a WaitGroup.
//
// Main does, n times (default 1,000,000): wg.Add(1); go func() { wg.Done() }()
// then waits for the group. The figure is the wall time from the first spawn
// to the return of the wait, divided by n: ns_per_goroutine.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

func main() {
	procs := flag.Int("procs", 0, "GOMAXPROCS for the run (default all CPUs)")
	n := flag.Int("n", 1000000, "work size")
	flag.Parse()
	if flag.NArg() != 0 || *procs < 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "spawn: -procs must be >= 1, -n > 0, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}

	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < *n; i++ {
		wg.Add(1)
		go func() { wg.Done() }()
	}
	wg.Wait()
	elapsed := time.Since(start)

	fmt.Printf("RESULT name=spawn procs=%d metric=ns_per_goroutine value=%.2f unit=ns\n",
		runtime.GOMAXPROCS(0), float64(elapsed.Nanoseconds())/float64(*n))
}

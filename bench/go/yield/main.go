// SPDX-License-Identifier: MIT
// yield - the Go peer of bench/yield.c: two goroutines calling
// runtime.Gosched in turn.
//
// Main starts two goroutines that each call runtime.Gosched in a loop, n calls
// between them (default 10,000,000; the first does ceil(n/2), the second
// floor(n/2)), and waits for both. On one P each Gosched hands the P to the
// other goroutine. The figure is the wall time from starting the pair to the
// return of the wait, divided by n: ns_per_switch. The row is procs=1, so
// -procs defaults to 1 here.
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
	procs := flag.Int("procs", 1, "GOMAXPROCS for the run")
	n := flag.Int("n", 10000000, "work size")
	flag.Parse()
	if flag.NArg() != 0 || *procs <= 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "yield: -procs and -n must be > 0, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*procs)

	var wg sync.WaitGroup
	yielder := func(calls int) {
		for i := 0; i < calls; i++ {
			runtime.Gosched()
		}
		wg.Done()
	}
	start := time.Now()
	wg.Add(2)
	go yielder(*n - *n/2)
	go yielder(*n / 2)
	wg.Wait()
	elapsed := time.Since(start)

	fmt.Printf("RESULT name=yield procs=%d metric=ns_per_switch value=%.2f unit=ns\n",
		runtime.GOMAXPROCS(0), float64(elapsed.Nanoseconds())/float64(*n))
}

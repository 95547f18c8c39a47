// SPDX-License-Identifier: MIT
// fib_par - the Go peer of bench/fib_par.c: fork-join fib(n) (default 32), a
// goroutine per call above the cutoff, 20, joined by channel; plain recursion
// below it.
//
// pfib(n), for n > 20, makes a channel of int64 with 2 buffered slots; for
// each of n-1 and n-2 it starts a goroutine par(m) computing pfib(m) and
// sending it on the channel when m > 20, and otherwise computes fib(m) by
// plain recursion itself; then it receives what the goroutines sent and
// returns the sum. Main starts par(n) the same way and receives the result,
// which is checked against an iterative fib.
//
// The program covers its procs itself: after one untimed warm-up run at
// -procs, it computes fib(n) with GOMAXPROCS 1, then with GOMAXPROCS set to
// -procs (default 2), and prints the wall time of
// each, in milliseconds (wall, procs=1 and procs=N), then the first divided
// by the second (speedup_vs_par_procs1, procs=N).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

const cutoff = 20

func fib(n int64) int64 {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func par(n int64, out chan<- int64) {
	out <- pfib(n)
}

// pfib returns fib(n) for n > cutoff.
func pfib(n int64) int64 {
	ch := make(chan int64, 2)
	var sum int64
	started := 0
	for i := int64(0); i < 2; i++ {
		m := n - 1 - i
		if m > cutoff {
			go par(m, ch)
			started++
		} else {
			sum += fib(m)
		}
	}
	for i := 0; i < started; i++ {
		sum += <-ch
	}
	return sum
}

// run computes fib(n) the parallel way once.
func run(n int64) int64 {
	if n <= cutoff {
		return fib(n)
	}
	out := make(chan int64, 1)
	go par(n, out)
	return <-out
}

func check(n, got int64) {
	var a, b uint64 = 0, 1 // wraps for n > 92, as the recursion does
	for i := int64(0); i < n; i++ {
		a, b = b, a+b
	}
	if uint64(got) != a {
		fmt.Fprintf(os.Stderr, "fib_par: fib(%d) came out as %d, not %d\n", n, got, a)
		os.Exit(1)
	}
}

func main() {
	procs := flag.Int("procs", 2, "GOMAXPROCS for the second run (the first uses 1)")
	n := flag.Int64("n", 32, "work size")
	flag.Parse()
	if flag.NArg() != 0 || *procs <= 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "fib_par: -procs and -n must be > 0, and no arguments")
		flag.Usage()
		os.Exit(2)
	}

	// One untimed run at -procs first, so that neither timed run pays for
	// starting threads or growing stacks.
	runtime.GOMAXPROCS(*procs)
	check(*n, run(*n))

	runtime.GOMAXPROCS(1)
	start := time.Now()
	r := run(*n)
	wall1 := time.Since(start)
	check(*n, r)
	fmt.Printf("RESULT name=fib_par procs=%d metric=wall value=%.2f unit=ms\n",
		runtime.GOMAXPROCS(0), float64(wall1.Nanoseconds())/1e6)

	runtime.GOMAXPROCS(*procs)
	start = time.Now()
	r = run(*n)
	wallp := time.Since(start)
	check(*n, r)
	fmt.Printf("RESULT name=fib_par procs=%d metric=wall value=%.2f unit=ms\n",
		runtime.GOMAXPROCS(0), float64(wallp.Nanoseconds())/1e6)
	fmt.Printf("RESULT name=fib_par procs=%d metric=speedup_vs_par_procs1 value=%.2f unit=x\n",
		runtime.GOMAXPROCS(0), float64(wall1.Nanoseconds())/float64(wallp.Nanoseconds()))
}

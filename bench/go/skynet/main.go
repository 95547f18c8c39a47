// SPDX-License-Identifier: MIT
// skynet - the Go peer of bench/skynet.c: the skynet benchmark, a tree of
// goroutines, fan-out 10, whose leaves return their numbers, summed back up
// the tree by channel.
//
// skynet(c, num, size) with size 1 is a leaf: it sends num on c. Otherwise it
// makes an unbuffered channel rc, starts ten goroutines
// skynet(rc, num + i*size/10, size/10) for i = 0..9, receives ten values from
// rc, and sends their sum on c. Main starts skynet(c, 0, n) and receives the
// total, which must be n * (n-1) / 2 (499,999,500,000 for the default n,
// 1,000,000 leaves). n must be a power of 10. The figure is the wall time
// from starting the root to receiving the total, in milliseconds: wall.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

const fanout = 10

func skynet(c chan int64, num, size int64) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan int64)
	var sum int64
	sub := size / fanout
	for i := int64(0); i < fanout; i++ {
		go skynet(rc, num+i*sub, sub)
	}
	for i := 0; i < fanout; i++ {
		sum += <-rc
	}
	c <- sum
}

func main() {
	procs := flag.Int("procs", 0, "GOMAXPROCS for the run (default all CPUs)")
	n := flag.Int64("n", 1000000, "work size (a power of 10)")
	flag.Parse()
	if flag.NArg() != 0 || *procs < 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "skynet: -procs must be >= 1, -n > 0, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	s := *n
	for s%fanout == 0 {
		s /= fanout
	}
	if s != 1 {
		fmt.Fprintf(os.Stderr, "skynet: -n must be a power of %d, not %d\n", fanout, *n)
		flag.Usage()
		os.Exit(2)
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}

	c := make(chan int64)
	start := time.Now()
	go skynet(c, 0, *n)
	total := <-c
	elapsed := time.Since(start)
	if want := *n / 2 * (*n - 1); total != want {
		fmt.Fprintf(os.Stderr, "skynet: the sum is %d, not %d\n", total, want)
		os.Exit(1)
	}

	fmt.Printf("RESULT name=skynet procs=%d metric=wall value=%.2f unit=ms\n",
		runtime.GOMAXPROCS(0), float64(elapsed.Nanoseconds())/1e6)
}

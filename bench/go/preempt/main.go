// SPDX-License-Identifier: MIT
// preempt - the Go peer of bench/preempt.c: how late a 1 ms sleep ends while
// a tight loop holds the only P.
//
// Main first calibrates the loop (no calls of any kind, only arithmetic:
// s += i ^ (i >> 3)) to last about 300 ms: it runs it with 2^20 iterations,
// doubling until one run takes at least 30 ms, and scales that count. Then n
// trials (default 5), each: start a goroutine running the loop;
// start := time.Now(); time.Sleep(time.Millisecond);
// late := time.Since(start) - time.Millisecond; wait for the loop to end. The
// figure is the median lateness: sleep1ms_late, in ms. With
// GODEBUG=asyncpreemptoff=1 (the second row, set by bench/run.sh) main wakes
// only at the end of the loop. The row is procs=1, so -procs defaults to 1
// here.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"
)

const spinNS = 300 * 1000 * 1000

var sink uint64

// spin is the tight loop: no calls, so no point at which to yield
// cooperatively.
//
//go:noinline
func spin(n uint64) {
	var s uint64
	for i := uint64(0); i < n; i++ {
		s += i ^ (i >> 3)
	}
	sink = s
}

// calibrate returns the iteration count that makes spin last about spinNS.
func calibrate() uint64 {
	n := uint64(1 << 20)
	var ns int64
	for {
		start := time.Now()
		spin(n)
		ns = time.Since(start).Nanoseconds()
		if ns >= 30*1000*1000 || n >= 1<<40 {
			break
		}
		n *= 2
	}
	n = uint64(float64(n) * spinNS / float64(ns))
	if n == 0 {
		n = 1
	}
	return n
}

func main() {
	procs := flag.Int("procs", 1, "GOMAXPROCS for the run")
	n := flag.Int("n", 5, "work size (trials)")
	flag.Parse()
	if flag.NArg() != 0 || *procs <= 0 || *n <= 0 || *n > 1000 {
		fmt.Fprintln(os.Stderr, "preempt: -procs must be > 0, -n in 1..1000, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*procs)

	late := make([]int64, *n)
	iters := calibrate()
	var wg sync.WaitGroup
	for i := range late {
		wg.Add(1)
		go func() {
			spin(iters)
			wg.Done()
		}()
		start := time.Now()
		time.Sleep(time.Millisecond)
		late[i] = int64(time.Since(start) - time.Millisecond)
		wg.Wait()
	}
	sort.Slice(late, func(a, b int) bool { return late[a] < late[b] })
	m := len(late)
	med := late[m/2]
	if m%2 == 0 {
		med = (late[m/2-1] + late[m/2]) / 2
	}

	fmt.Printf("RESULT name=preempt procs=%d metric=sleep1ms_late value=%.2f unit=ms\n",
		runtime.GOMAXPROCS(0), float64(med)/1e6)
}

// SPDX-License-Identifier: MIT
// timerlat - the Go peer of bench/timerlat.c: how late a timer-woken
// goroutine runs while every P is busy.
//
// 11 goroutines run loops without calls on -procs Ps (2); one more sleeps
// 1 ms in a loop, -n times (default 300), and records how late each sleep
// ended. Figures: late_p50, late_p99, late_max (us).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

const hogs = 11

var sink uint64

// hog is a loop without calls: no point at which to yield cooperatively.
//
//go:noinline
func hog(stop *int32, wg *sync.WaitGroup) {
	var s uint64
	for atomic.LoadInt32(stop) == 0 {
		for i := uint64(0); i < 1000; i++ {
			s += i ^ (s >> 3)
		}
	}
	sink = s
	wg.Done()
}

func main() {
	procs := flag.Int("procs", 2, "GOMAXPROCS for the run")
	n := flag.Int("n", 300, "work size (sleeps)")
	flag.Parse()
	if flag.NArg() != 0 || *procs <= 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "timerlat: -procs and -n must be > 0, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*procs)

	var stop int32
	var wg sync.WaitGroup
	for i := 0; i < hogs; i++ {
		wg.Add(1)
		go hog(&stop, &wg)
	}
	time.Sleep(50 * time.Millisecond)
	late := make([]int64, *n)
	for i := range late {
		start := time.Now()
		time.Sleep(time.Millisecond)
		late[i] = int64(time.Since(start) - time.Millisecond)
	}
	atomic.StoreInt32(&stop, 1)
	wg.Wait()
	sort.Slice(late, func(a, b int) bool { return late[a] < late[b] })
	p := runtime.GOMAXPROCS(0)
	m := len(late)
	fmt.Printf("RESULT name=timerlat procs=%d metric=late_p50 value=%.1f unit=us\n", p, float64(late[m/2])/1e3)
	fmt.Printf("RESULT name=timerlat procs=%d metric=late_p99 value=%.1f unit=us\n", p, float64(late[m*99/100])/1e3)
	fmt.Printf("RESULT name=timerlat procs=%d metric=late_max value=%.1f unit=us\n", p, float64(late[m-1])/1e3)
}

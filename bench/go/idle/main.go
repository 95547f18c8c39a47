// SPDX-License-Identifier: MIT
// idle - the Go peer of bench/idle.c: the memory and creation cost of
// goroutines parked on a channel.
//
// Main reads its resident set size (VmRSS in /proc/self/status), then starts
// n goroutines (default 1,000,000), each of which signals a WaitGroup, ready,
// and then parks receiving from one shared chan struct{} that nothing sends
// on. When ready.Wait returns, every goroutine has signalled and is at, or a
// few instructions from, its receive; main then reads VmRSS again. Finally it
// closes the channel, which wakes them all, and waits on a second WaitGroup
// for all of them to end.
//
// Figures (both on the one row): rss_per_goroutine, (RSS after - RSS before)
// / n in bytes; create_ns_per_goroutine, the wall time from the first start
// to the return of ready.Wait, / n in ns. The row is procs=2, so -procs
// defaults to 2 here.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

type shared struct {
	ch     chan struct{} // never sent on; closed at the end
	ready  sync.WaitGroup
	exited sync.WaitGroup
}

func idler(s *shared) {
	s.ready.Done()
	<-s.ch
	s.exited.Done()
}

// vmrss returns the VmRSS of this process in bytes.
func vmrss() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, "idle:", err)
		os.Exit(1)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb int64
		if strings.HasPrefix(sc.Text(), "VmRSS:") {
			if _, err := fmt.Sscanf(sc.Text(), "VmRSS: %d kB", &kb); err == nil {
				return kb * 1024
			}
		}
	}
	fmt.Fprintln(os.Stderr, "idle: no VmRSS line in /proc/self/status")
	os.Exit(1)
	return 0
}

func main() {
	procs := flag.Int("procs", 2, "GOMAXPROCS for the run")
	n := flag.Int64("n", 1000000, "work size")
	flag.Parse()
	if flag.NArg() != 0 || *procs <= 0 || *n <= 0 || *n > math.MaxInt32 {
		fmt.Fprintln(os.Stderr, "idle: -procs must be > 0, -n in 1..2147483647, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*procs)

	s := &shared{ch: make(chan struct{})}
	s.ready.Add(int(*n))
	s.exited.Add(int(*n))
	rss0 := vmrss()
	start := time.Now()
	for i := int64(0); i < *n; i++ {
		go idler(s)
	}
	s.ready.Wait()
	elapsed := time.Since(start)
	rss1 := vmrss()
	close(s.ch)
	s.exited.Wait()

	fmt.Printf("RESULT name=idle procs=%d metric=rss_per_goroutine value=%.2f unit=B\n",
		runtime.GOMAXPROCS(0), float64(rss1-rss0)/float64(*n))
	fmt.Printf("RESULT name=idle procs=%d metric=create_ns_per_goroutine value=%.2f unit=ns\n",
		runtime.GOMAXPROCS(0), float64(elapsed.Nanoseconds())/float64(*n))
}

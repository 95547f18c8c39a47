// SPDX-License-Identifier: MIT
// syscallhandoff - the Go peer of bench/syscallhandoff.c: how soon a new
// goroutine runs while another blocks in read(2) holding the only P.
//
// n trials (default 21), each followed by a 1 ms sleep. A trial makes a pipe
// with syscall.Pipe (blocking descriptors, not the netpoller's) and starts a
// reader goroutine that sends time.Now() on an unbuffered channel and then
// calls syscall.Read for one byte of the empty pipe. The send makes main
// runnable on the reader's P, but the reader's thread holds that P as it
// enters read(2), so main's receive returns only once sysmon has handed the
// P to another thread. Main then starts a goroutine that sends the time it
// first runs; the trial's figure is that time minus the reader's, in µs. Main
// writes a byte to release the reader, waits for it and closes the pipe.
//
// The figure is the median: median_trial (µs). The C program also measures
// an explicit variant (gort_entersyscallblock, Go's entersyscallblock, which
// Go programs cannot call: every blocking syscall.Read takes the path above),
// reported as median_trial_block. Go's peer of that variant is the same read,
// so this program prints its one median under both names. The row is
// procs=1, so -procs defaults to 1 here.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"syscall"
	"time"
)

func trial(entered, ran chan time.Time) time.Duration {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		fmt.Fprintln(os.Stderr, "syscallhandoff: pipe:", err)
		os.Exit(1)
	}
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 1)
		entered <- time.Now()
		var r int
		var err error
		for {
			r, err = syscall.Read(p[0], buf) // the M blocks in the kernel holding the P
			if err != syscall.EINTR {
				break
			}
		}
		if r != 1 {
			fmt.Fprintln(os.Stderr, "syscallhandoff: read:", r, err)
			os.Exit(1)
		}
		close(done)
	}()
	t0 := <-entered
	go func() { ran <- time.Now() }() // needs the P to run
	t1 := <-ran
	if _, err := syscall.Write(p[1], []byte{'x'}); err != nil {
		fmt.Fprintln(os.Stderr, "syscallhandoff: write:", err)
		os.Exit(1)
	}
	<-done
	syscall.Close(p[0])
	syscall.Close(p[1])
	return t1.Sub(t0)
}

func main() {
	procs := flag.Int("procs", 1, "GOMAXPROCS for the run")
	n := flag.Int("n", 21, "work size (trials)")
	flag.Parse()
	if flag.NArg() != 0 || *procs <= 0 || *n <= 0 || *n > 100000 {
		fmt.Fprintln(os.Stderr, "syscallhandoff: -procs must be > 0, -n in 1..100000, and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*procs)

	entered := make(chan time.Time)
	ran := make(chan time.Time)
	v := make([]int64, *n)
	for i := range v {
		v[i] = trial(entered, ran).Nanoseconds()
		time.Sleep(time.Millisecond)
	}
	sort.Slice(v, func(a, b int) bool { return v[a] < v[b] })
	m := len(v)
	med := v[m/2]
	if m%2 == 0 {
		med = (v[m/2-1] + v[m/2]) / 2
	}

	for _, metric := range []string{"median_trial", "median_trial_block"} {
		fmt.Printf("RESULT name=syscallhandoff procs=%d metric=%s value=%.2f unit=us\n",
			runtime.GOMAXPROCS(0), metric, float64(med)/1e3)
	}
}

// SPDX-License-Identifier: MIT
// timers - the Go peer of bench/timers.c: how late goroutines wake from short
// sleeps when many sleep at once.
//
// Main starts n goroutines (default 10,000) and waits for them on a
// WaitGroup. Each sleeps 1 ms 20 times in a row, timing every sleep:
// start := time.Now(); time.Sleep(time.Millisecond);
// late := time.Since(start) - time.Millisecond, and storing late in its own
// slots of one slice. Afterwards the n * 20 lateness values (200,000 by
// default) are sorted and the figures are their 50th and 99th percentiles
// (nearest rank), in microseconds: late_p50 and late_p99.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"
)

const sleeps = 20

// percentile returns the p-th percentile of the sorted values v, by nearest
// rank.
func percentile(v []int64, p int) int64 {
	rank := (int64(p)*int64(len(v)) + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return v[rank-1]
}

func sleeper(slot []int64, wg *sync.WaitGroup) {
	for k := 0; k < sleeps; k++ {
		start := time.Now()
		time.Sleep(time.Millisecond)
		slot[k] = int64(time.Since(start) - time.Millisecond)
	}
	wg.Done()
}

func main() {
	procs := flag.Int("procs", 0, "GOMAXPROCS for the run (default all CPUs)")
	n := flag.Int64("n", 10000, "work size")
	flag.Parse()
	if flag.NArg() != 0 || *procs < 0 || *n <= 0 || *n > math.MaxInt32/sleeps {
		fmt.Fprintf(os.Stderr, "timers: -procs must be >= 1, -n in 1..%d, and no arguments\n",
			math.MaxInt32/sleeps)
		flag.Usage()
		os.Exit(2)
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}

	late := make([]int64, *n*sleeps) // in ns
	var wg sync.WaitGroup
	wg.Add(int(*n))
	for i := int64(0); i < *n; i++ {
		go sleeper(late[i*sleeps:(i+1)*sleeps], &wg)
	}
	wg.Wait()
	sort.Slice(late, func(a, b int) bool { return late[a] < late[b] })

	fmt.Printf("RESULT name=timers procs=%d metric=late_p50 value=%.2f unit=us\n",
		runtime.GOMAXPROCS(0), float64(percentile(late, 50))/1e3)
	fmt.Printf("RESULT name=timers procs=%d metric=late_p99 value=%.2f unit=us\n",
		runtime.GOMAXPROCS(0), float64(percentile(late, 99))/1e3)
}

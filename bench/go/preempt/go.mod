module gort/bench/preempt

go 1.19

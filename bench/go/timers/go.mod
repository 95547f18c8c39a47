module gort/bench/timers

go 1.19

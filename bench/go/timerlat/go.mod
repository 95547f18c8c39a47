module gort/bench/timerlat

go 1.19

module gort/bench/yield

go 1.19

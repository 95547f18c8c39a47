module gort/bench/threadring

go 1.19

module gort/bench/skynet

go 1.19

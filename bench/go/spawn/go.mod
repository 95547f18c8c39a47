module gort/bench/spawn

go 1.19

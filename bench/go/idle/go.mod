module gort/bench/idle

go 1.19

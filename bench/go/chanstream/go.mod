module gort/bench/chanstream

go 1.19

module gort/bench/chanpingpong

go 1.19

module gort/bench/chandeadline

go 1.19

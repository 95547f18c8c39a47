module gort/bench/echo

go 1.19

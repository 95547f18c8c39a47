module gort/bench/http_wrk

go 1.19

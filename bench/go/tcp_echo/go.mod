module gort/bench/tcp_echo

go 1.19

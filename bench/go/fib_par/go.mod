module gort/bench/fib_par

go 1.19

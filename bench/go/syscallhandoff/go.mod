module gort/bench/syscallhandoff

go 1.19

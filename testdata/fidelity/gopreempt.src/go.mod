module gopreempt

go 1.22

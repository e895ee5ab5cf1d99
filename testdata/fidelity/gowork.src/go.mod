module gowork

go 1.22

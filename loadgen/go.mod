module gatebench/loadgen

go 1.22

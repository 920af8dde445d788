module gatebench/backend

go 1.22

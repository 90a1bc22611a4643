module echpair

go 1.26

module github.com/memwho/memwho

go 1.26.8

module github.com/headroom-llm/headroom

go 1.24

module github.com/headroom-llm/headroom

go 1.26.0

require github.com/prometheus/common v0.73.1 // indirect

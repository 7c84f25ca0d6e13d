# FTS5 is compiled into SQLite only with this tag; every go command needs it.
export GOFLAGS := -tags=sqlite_fts5
export CGO_ENABLED := 1

BIN     := bin/omnibrain
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build run test bench lint fmt clean

build:
	go build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/omnibrain

## run: start the daemon in the foreground on embedded defaults (~/.omnibrain)
run: build
	./$(BIN) run

test:
	go test -count=1 ./...

## bench: benchmarks for ingest, search, triage, approvals (see README)
bench:
	go test -run '^$$' -bench . -benchmem -timeout 60m ./...

lint:
	go vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin

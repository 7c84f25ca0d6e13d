# FTS5 is compiled into SQLite only with sqlite_fts5; every go command needs it.
# grpcnotrace: gRPC is linked (google.golang.org/api's option package imports
# it) though the REST clients never use it; without the tag it links
# golang.org/x/net/trace, whose html/template pages make the linker keep every
# exported method of every type (about 35 MB of the binary).
export GOFLAGS := -tags=sqlite_fts5,grpcnotrace
export CGO_ENABLED := 1

BIN     := bin/omnibrain
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build build-debug run test race bench lint fmt clean cc

# SQLite is compiled with cgo: a C compiler is the one thing Go alone lacks.
# On Debian/Ubuntu it is installed when missing (as root, or with sudo).
cc:
	@command -v $${CC:-gcc} >/dev/null 2>&1 || { \
	  echo "A C compiler is needed for SQLite (cgo); installing gcc..."; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq gcc libc6-dev; \
	  elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo apt-get install -y -qq gcc libc6-dev; \
	  else echo "Install gcc (e.g. apt-get install gcc) and retry." >&2; exit 1; fi; }

## build: bin/omnibrain without the symbol table and DWARF (-s -w) and
## without this machine's paths (-trimpath). Stack traces and pprof still
## name every function: they read the runtime's own tables, which stay.
build: cc
	go build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN) ./cmd/omnibrain

## build-debug: bin/omnibrain-debug with symbols, DWARF and full paths, for
## debuggers (dlv) and `go tool nm -size -sort size` (what the size is made of).
build-debug: cc
	go build -ldflags "$(LDFLAGS)" -o $(BIN)-debug ./cmd/omnibrain

## run: start the daemon in the foreground on embedded defaults (~/.omnibrain)
run: build
	./$(BIN) run

## test: every package's tests; tests needing ../shared/data skip without it.
## The timeout is per package: the CLI's end-to-end tests build and run the
## binary, which on a busy 2-core machine takes minutes, not seconds.
test: cc
	go test -count=1 -timeout 30m ./...

## race: the same tests under the race detector (a second SQLite build).
race: cc
	go test -race -count=1 -timeout 45m ./...

## bench: benchmarks for ingest, search, triage, approvals (see README)
bench: cc
	go test -run '^$$' -bench . -benchmem -timeout 60m ./...

lint: cc
	go vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w .

clean:
	rm -rf bin

// go-bench: Go's net/http as a peer in Courier's benchmarks. The same command line, workloads, checks and one JSON
// result line as the Swift clients (Benchmarks/Sources/BenchmarkCore), with the standard library only.
//
//	go-bench --scenario b --base http://127.0.0.1:PORT --tls-base https://127.0.0.1:PORT --h2-base ... \
//	    --proxy http://127.0.0.1:PORT --cert-pem ca.pem --requests 50000 --concurrency 64 \
//	    --big-path /1g --big-size 1073741824 --upload-file up.bin --scratch DIR
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const smallSize = 64

type options struct {
	scenario, base, tlsBase, h2Base, proxy, holdBase, certPEM, smallPath, bigPath, uploadFile, scratch string
	requests, concurrency                                                                              int
	bigSize                                                                                            int64
}

func parse(args []string) (options, error) {
	values := map[string]string{}
	for i := 0; i < len(args); i += 2 {
		if !strings.HasPrefix(args[i], "--") || i+1 >= len(args) {
			return options{}, fmt.Errorf("expected --name value pairs, got %s", args[i])
		}
		values[strings.TrimPrefix(args[i], "--")] = args[i+1]
	}
	number := func(name string, fallback int64) int64 {
		if v, err := strconv.ParseInt(values[name], 10, 64); err == nil {
			return v
		}
		return fallback
	}
	o := options{
		scenario: values["scenario"], base: values["base"], tlsBase: values["tls-base"], h2Base: values["h2-base"],
		proxy: values["proxy"], holdBase: values["hold-base"], certPEM: values["cert-pem"],
		smallPath: values["small-path"], bigPath: values["big-path"], uploadFile: values["upload-file"],
		scratch: values["scratch"], requests: int(number("requests", 2000)),
		concurrency: int(number("concurrency", 64)), bigSize: number("big-size", 1<<30),
	}
	if o.smallPath == "" {
		o.smallPath = "/64b"
	}
	if o.bigPath == "" {
		o.bigPath = "/1g"
	}
	if o.scratch == "" {
		o.scratch = os.TempDir()
	}
	if !strings.Contains("abcdefghijkl", o.scenario) || len(o.scenario) != 1 || o.base == "" {
		return o, fmt.Errorf("missing or unknown --scenario or --base")
	}
	if o.requests < 1 || o.concurrency < 1 {
		return o, fmt.Errorf("--requests and --concurrency must be at least 1")
	}
	return o, nil
}

// rootPool: the system's roots and the benchmark's CA, read once (an app that makes a client per job, as (j) does,
// keeps its trust roots rather than reading them again for every client).
var (
	rootsOnce sync.Once
	roots     *x509.CertPool
	rootsErr  error
)

func rootPool(certPEM string) (*x509.CertPool, error) {
	rootsOnce.Do(func() {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if certPEM != "" {
			pem, err := os.ReadFile(certPEM)
			if err != nil {
				rootsErr = err
				return
			}
			pool.AppendCertsFromPEM(pem)
		}
		roots = pool
	})
	return roots, rootsErr
}

// newClient sets net/http up as a user would for the scenario: one Transport with at most `connections`
// connections to the host, compression off (the servers' files are random or zeros), the benchmark's CA trusted
// besides the system's, HTTP/2 offered by ALPN (ForceAttemptHTTP2, needed with a custom TLS config), and the proxy
// for (h).
func newClient(o options, connections int) (*http.Client, error) {
	pool, err := rootPool(o.certPEM)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{
		MaxConnsPerHost:     connections,
		MaxIdleConnsPerHost: connections,
		MaxIdleConns:        connections,
		DisableCompression:  true,
		ForceAttemptHTTP2:   true,
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		IdleConnTimeout:     90 * time.Second,
	}
	if o.scenario == "h" {
		proxy, err := url.Parse(o.proxy)
		if err != nil || o.proxy == "" {
			return nil, fmt.Errorf("scenario h needs --proxy")
		}
		transport.Proxy = http.ProxyURL(proxy)
	}
	return &http.Client{Transport: transport}, nil
}

type measurement map[string]any

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-bench:", err)
		os.Exit(2)
	}
	m := measurement{"client": "go", "scenario": o.scenario, "status": "ok", "requests": 0, "bytes": 0, "seconds": 0.0}
	if o.scenario == "l" {
		// (l) is a background session's download: net/http has nothing like it, as async-http-client has not.
		m["status"] = "n/a"
		m["detail"] = "go has no background sessions"
	} else if err := run(o, m); err != nil {
		m["status"] = "error"
		m["detail"] = err.Error()
	}
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) == nil {
		m["cpuSeconds"] = cpuSeconds(usage)
		m["maxRSSKiB"] = usage.Maxrss
	}
	if kib := ownPeakRSSKiB(); kib > 0 {
		m["ownPeakRSSKiB"] = kib
	}
	line, _ := json.Marshal(m) // map keys come out sorted, as the Swift clients' lines
	fmt.Println(string(line))
	if m["status"] == "error" {
		os.Exit(1)
	}
}

// cpuSeconds: user and system CPU time of a getrusage reading.
func cpuSeconds(usage syscall.Rusage) float64 {
	seconds := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return seconds(usage.Utime) + seconds(usage.Stime)
}

// processCPUSeconds: the CPU time this process has used so far, or -1 when getrusage fails.
func processCPUSeconds() float64 {
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) != nil {
		return -1
	}
	return cpuSeconds(usage)
}

func run(o options, m measurement) error {
	// The work's own CPU (workCPUSeconds, as the Swift clients report it): without the process's start-up.
	if before := processCPUSeconds(); before >= 0 {
		defer func() {
			if after := processCPUSeconds(); after >= 0 {
				m["workCPUSeconds"] = after - before
			}
		}()
	}
	connections := 1
	if strings.Contains("beghik", o.scenario) {
		connections = o.concurrency
	}
	if o.scenario == "j" {
		return sessionPerRequest(o, m)
	}
	client, err := newClient(o, connections)
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	switch o.scenario {
	case "a", "b", "h":
		return requestRate(client, o, o.base, connections, m)
	case "i":
		// Every request at once (a goroutine each); the Transport queues them for its 64 connections.
		m["rssBeforeKiB"] = ownPeakRSSKiB()
		return requestRate(client, o, o.base, o.requests, m)
	case "k":
		return queueHeld(client, o, m)
	case "e":
		return requestRate(client, o, o.tlsBase, connections, m)
	case "g":
		return requestRate(client, o, o.h2Base, connections, m)
	case "c", "d":
		return transfer(client, o, m)
	case "f":
		return upload(client, o, m)
	}
	return nil
}

// requestRate: `requests` GETs of the 64-byte file, `inFlight` workers each taking every inFlight-th request, every
// response checked (status, size, and for g the protocol, for h the proxy's header).
func requestRate(client *http.Client, o options, base string, inFlight int, m measurement) error {
	target := strings.TrimSuffix(base, "/") + o.smallPath
	var failure error
	var failureOnce sync.Once
	var failed sync.Map
	latencies := make([][]time.Duration, inFlight)
	protocolChecks := make([]int, inFlight)
	var group sync.WaitGroup
	start := time.Now()
	for worker := 0; worker < inFlight; worker++ {
		group.Add(1)
		go func(worker int) {
			defer group.Done()
			for index := worker; index < o.requests; index += inFlight {
				if _, stop := failed.Load("x"); stop {
					return
				}
				begin := time.Now()
				err := getSmall(client, target, o.scenario, &protocolChecks[worker])
				latencies[worker] = append(latencies[worker], time.Since(begin))
				if err != nil {
					failureOnce.Do(func() { failure = err })
					failed.Store("x", true)
					return
				}
			}
		}(worker)
	}
	group.Wait()
	elapsed := time.Since(start).Seconds()
	if failure != nil {
		return failure
	}
	var all []time.Duration
	checks := 0
	for worker := range latencies {
		all = append(all, latencies[worker]...)
		checks += protocolChecks[worker]
	}
	if len(all) != o.requests {
		return fmt.Errorf("%d of %d requests completed", len(all), o.requests)
	}
	switch o.scenario {
	case "g":
		if checks == 0 {
			return errors.New("h2 unverified")
		}
		m["verified"] = fmt.Sprintf("h2 on %d of %d responses", checks, o.requests)
	case "h":
		m["verified"] = fmt.Sprintf("X-Via-Proxy on all %d responses", o.requests)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	percentile := func(fraction float64) float64 {
		rank := int(math.Ceil(fraction * float64(len(all))))
		index := rank - 1
		if index < 0 {
			index = 0
		}
		if index > len(all)-1 {
			index = len(all) - 1
		}
		return float64(all[index].Nanoseconds()) / 1e6
	}
	m["requests"] = o.requests
	m["bytes"] = int64(o.requests) * smallSize
	m["seconds"] = elapsed
	m["requestsPerSecond"] = float64(o.requests) / elapsed
	m["p50Milliseconds"] = percentile(0.50)
	m["p99Milliseconds"] = percentile(0.99)
	return nil
}

// sessionPerRequest: (j) each GET on a Transport and Client of its own, closed after it.
func sessionPerRequest(o options, m measurement) error {
	target := strings.TrimSuffix(o.base, "/") + o.smallPath
	latencies := make([]time.Duration, 0, o.requests)
	start := time.Now()
	var unused int
	for index := 0; index < o.requests; index++ {
		begin := time.Now()
		client, err := newClient(o, 1)
		if err != nil {
			return err
		}
		err = getSmall(client, target, o.scenario, &unused)
		client.CloseIdleConnections()
		if err != nil {
			return err
		}
		latencies = append(latencies, time.Since(begin))
	}
	elapsed := time.Since(start).Seconds()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	m["requests"] = o.requests
	m["bytes"] = int64(o.requests) * smallSize
	m["seconds"] = elapsed
	m["requestsPerSecond"] = float64(o.requests) / elapsed
	m["p50Milliseconds"] = float64(latencies[(len(latencies)+1)/2-1].Nanoseconds()) / 1e6
	m["p99Milliseconds"] = float64(latencies[int(math.Ceil(0.99*float64(len(latencies))))-1].Nanoseconds()) / 1e6
	return nil
}

// ownPeakRSSKiB: VmHWM from /proc/self/status, this process's own peak (getrusage's ru_maxrss starts at the
// size of the process this one was forked from).
// queueHeld (k): `requests` GETs at a server that never answers, a goroutine each (net/http's way to have requests
// in flight), the resident set sampled after every 1,000 started, after the last and once the queue settled; then
// every request is cancelled and waited for.
func queueHeld(client *http.Client, o options, m measurement) error {
	if o.holdBase == "" {
		return errors.New("scenario k needs --hold-base")
	}
	target := strings.TrimSuffix(o.holdBase, "/") + "/held"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	samples := []int64{ownRSSKiB()}
	var group sync.WaitGroup
	var endedOtherwise atomic.Int64
	start := time.Now()
	for index := 0; index < o.requests; index++ {
		group.Add(1)
		go func() {
			defer group.Done()
			request, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err != nil {
				return
			}
			response, err := client.Do(request)
			if err == nil {
				response.Body.Close()
			}
			// Only the driver's cancellation may end a request: one that ended otherwise was not queued when
			// the resident set was read.
			if err == nil || !errors.Is(err, context.Canceled) {
				endedOtherwise.Add(1)
			}
		}()
		if (index+1)%1000 == 0 {
			samples = append(samples, ownRSSKiB())
		}
	}
	if o.requests%1000 != 0 {
		samples = append(samples, ownRSSKiB())
	}
	time.Sleep(300 * time.Millisecond)
	samples = append(samples, ownRSSKiB())
	cancel()
	group.Wait()
	if other := endedOtherwise.Load(); other != 0 {
		return fmt.Errorf("%d of %d requests ended before they were cancelled: the queue did not hold", other, o.requests)
	}
	m["requests"] = o.requests
	m["seconds"] = time.Since(start).Seconds()
	m["queuedRSSKiB"] = samples
	return nil
}

func ownPeakRSSKiB() int64 { return ownStatusKiB("VmHWM:") }

func ownRSSKiB() int64 { return ownStatusKiB("VmRSS:") }

func ownStatusKiB(key string) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == key {
			kib, _ := strconv.ParseInt(fields[1], 10, 64)
			return kib
		}
	}
	return 0
}

func getSmall(client *http.Client, target, scenario string, protocolChecks *int) error {
	response, err := client.Get(target)
	if err != nil {
		return err
	}
	defer response.Body.Close()
	n, err := io.Copy(io.Discard, response.Body)
	if err != nil {
		return err
	}
	if response.StatusCode != 200 || n != smallSize {
		return fmt.Errorf("GET %s: expected status 200 and %d bytes, got %d and %d", target, smallSize, response.StatusCode, n)
	}
	switch scenario {
	case "g":
		if response.ProtoMajor != 2 {
			return fmt.Errorf("GET %s: expected HTTP/2 (h2), the response came over %s", target, response.Proto)
		}
		*protocolChecks++
	case "h":
		if response.Header.Get("X-Via-Proxy") == "" {
			return fmt.Errorf("GET %s: the response has no X-Via-Proxy header", target)
		}
	}
	return nil
}

// transfer: (c) the big file written to a file in the scratch folder (removed after the clock stops, as the
// harness removes the others'), (d) read and discarded.
func transfer(client *http.Client, o options, m measurement) error {
	target := strings.TrimSuffix(o.base, "/") + o.bigPath
	start := time.Now()
	response, err := client.Get(target)
	if err != nil {
		return err
	}
	defer response.Body.Close()
	var n int64
	var file *os.File
	if o.scenario == "c" {
		file, err = os.CreateTemp(o.scratch, "go-bench-*")
		if err != nil {
			return err
		}
		defer os.Remove(file.Name())
		n, err = io.Copy(file, response.Body)
		if closeErr := file.Close(); err == nil {
			err = closeErr
		}
	} else {
		n, err = io.Copy(io.Discard, response.Body)
	}
	elapsed := time.Since(start).Seconds()
	if err != nil {
		return err
	}
	if response.StatusCode != 200 || n != o.bigSize {
		return fmt.Errorf("GET %s: expected status 200 and %d bytes, got %d and %d", o.bigPath, o.bigSize, response.StatusCode, n)
	}
	record(m, o.bigSize, elapsed)
	return nil
}

// upload: (f) PUT the upload file to /sink, streamed from disk with its length; nginx answers 204 with the byte
// count it read.
func upload(client *http.Client, o options, m measurement) error {
	file, err := os.Open(filepath.Clean(o.uploadFile))
	if err != nil {
		return err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return err
	}
	request, err := http.NewRequest(http.MethodPut, strings.TrimSuffix(o.base, "/")+"/sink", file)
	if err != nil {
		return err
	}
	request.ContentLength = info.Size()
	start := time.Now()
	response, err := client.Do(request)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, response.Body)
	response.Body.Close()
	elapsed := time.Since(start).Seconds()
	received, _ := strconv.ParseInt(response.Header.Get("X-Received-Length"), 10, 64)
	if response.StatusCode != 204 || received < info.Size() {
		return fmt.Errorf("PUT /sink: expected status 204 and at least %d bytes received, got %d and %d", info.Size(), response.StatusCode, received)
	}
	record(m, info.Size(), elapsed)
	return nil
}

func record(m measurement, bytes int64, seconds float64) {
	m["requests"] = 1
	m["bytes"] = bytes
	m["seconds"] = seconds
	m["megabytesPerSecond"] = float64(bytes) / 1e6 / seconds
}

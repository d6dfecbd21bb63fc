package main

import (
	"context"
	"net"
	"net/url"
	"sync"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A scan's API server is rarely on its own machine: a CronJob reaches the
// control plane across the cluster's network, and a CI runner across a
// region. With -latency the timed tools reach the bench's API server
// through a delay line on loopback that holds every byte, each way, for
// that long before passing it on, as a network with that one-way delay
// does (no bandwidth limit): each request then waits a round trip more,
// and what a tool does while it waits shows.

// delay puts a delay line of d each way between the timed tools and the
// API server: they get a kubeconfig that names it (b.env.Kubeconfig is
// replaced after the estate is synced). It stops with ctx.
func (b *bed) delay(ctx context.Context, d time.Duration) error {
	server, err := url.Parse(b.env.Config.Host)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	go serveDelayed(ln, server.Host, d)
	// The API server's certificate names 127.0.0.1, which the delay line
	// listens on too: TLS goes through it untouched.
	path, err := b.env.WriteKubeconfig("kubeconfig-delayed", func(cfg *clientcmdapi.Config) error {
		for _, c := range cfg.Clusters {
			u, err := url.Parse(c.Server)
			if err != nil {
				return err
			}
			u.Host = ln.Addr().String()
			c.Server = u.String()
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.env.Kubeconfig = path
	say("the timed tools reach the API server through a delay line of %s each way (%s round trip)", d, 2*d)
	return nil
}

// serveDelayed passes each connection accepted on ln to target, every
// byte held d each way.
func serveDelayed(ln net.Listener, target string, d time.Duration) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer up.Close()
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); delayCopy(up, c, d) }()
			go func() { defer wg.Done(); delayCopy(c, up, d) }()
			wg.Wait()
		}()
	}
}

// delayCopy copies src to dst, writing each chunk read d after it was
// read, and then closes dst's writing side.
func delayCopy(dst, src net.Conn, d time.Duration) {
	type chunk struct {
		at   time.Time
		data []byte
	}
	// At most 1,024 chunks of 32 KiB in flight: 32 MiB a direction.
	line := make(chan chunk, 1024)
	go func() {
		defer close(line)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				line <- chunk{time.Now().Add(d), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range line {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	for range line { // the reader ends when src does
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
}

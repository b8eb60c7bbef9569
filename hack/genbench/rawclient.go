package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// A rawClient is a minimal HTTP/1.1 client for one URL, in the manner of
// wrk: the request is encoded once, the connection is kept alive while the
// server allows it, and parsing does no more than find the status, the
// length and the end of the body. It spends far less CPU than net/http, so
// on a small machine the bench measures the servers rather than itself.
// Not safe for concurrent use: each client goroutine has its own.
type rawClient struct {
	addr    string
	request []byte
	timeout time.Duration

	conn net.Conn
	br   *bufio.Reader
	body []byte
}

func newRawClient(rawURL string, header map[string]string, body string, timeout time.Duration) (*rawClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%s: only http is supported", rawURL)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return &rawClient{addr: u.Host, request: b.Bytes(), timeout: timeout}, nil
}

func (c *rawClient) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// do sends the request and returns the status and body; the body is valid
// until the next call.
func (c *rawClient) do() (int, []byte, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, c.timeout)
		if err != nil {
			return 0, nil, err
		}
		c.conn = conn
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 16<<10)
		} else {
			c.br.Reset(conn)
		}
	}
	c.conn.SetDeadline(time.Now().Add(c.timeout))
	if _, err := c.conn.Write(c.request); err != nil {
		c.close()
		return 0, nil, err
	}
	status, body, keep, err := c.read()
	if err != nil || !keep {
		c.close()
	}
	return status, body, err
}

func (c *rawClient) read() (status int, body []byte, keepAlive bool, err error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, false, fmt.Errorf("bad status line %q", line)
	}
	http11 := line[7] == '1'
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, false, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	keepAlive = http11
	for {
		h, err := c.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, nil, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Connection")):
			switch {
			case bytes.EqualFold(value, []byte("close")):
				keepAlive = false
			case bytes.EqualFold(value, []byte("keep-alive")):
				keepAlive = true
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, nil, false, errors.New("chunked answers are not supported by the bench client")
		}
	}
	if length < 0 {
		c.body, err = io.ReadAll(c.br)
		return status, c.body, false, err
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	c.body = c.body[:length]
	if _, err := io.ReadFull(c.br, c.body); err != nil {
		return 0, nil, false, err
	}
	return status, c.body, keepAlive, nil
}

package dockertest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The registry answers the Distribution API through a Throttle; killing it
// and starting it again keeps its address; a Throttle counts what it sent
// and Cut ends the connections open through it. (.ci/run runs this first,
// to build the registry once and up front.)
func TestRegistryThroughAThrottleSurvivesARestart(t *testing.T) {
	reg := StartRegistry(t)
	p := NewThrottle(t, reg.Addr, NewLink(0))
	get := func() (int, string, error) {
		resp, err := http.Get("http://" + p.Addr() + "/v2/_catalog")
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	code, body, err := get()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"repositories":[]}`, body)
	assert.Positive(t, p.Sent(), "the answer came through the proxy")

	// A connection held open through the proxy is ended by Cut.
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "GET /v2/ HTTP/1.1\r\nHost: %s\r\n\r\n", reg.Addr)
	require.NoError(t, err)
	r := bufio.NewReader(c)
	status, err := r.ReadString('\n')
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(status, "HTTP/1.1 200"), status)
	p.Cut()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.Copy(io.Discard, r)
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "Cut closed the connection rather than leaving it open: %v", err)

	reg.Kill()
	_, _, err = get()
	assert.Error(t, err, "nothing answers once the registry is killed")
	reg.Start()
	code, _, err = get()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, "started again on the same address")
}

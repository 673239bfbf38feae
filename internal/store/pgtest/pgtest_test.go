package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStartStop(t *testing.T) {
	s := Start(t)
	url := s.CreateDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	query := func() (int, error) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		var n int
		err = conn.QueryRow(ctx, "SELECT 6 * 7").Scan(&n)
		return n, err
	}
	if n, err := query(); err != nil || n != 42 {
		t.Fatalf("SELECT 6 * 7 = %d, %v", n, err)
	}
	s.Stop()
	if _, err := query(); err == nil {
		t.Fatal("query succeeded with the server stopped")
	}
	s.Start()
	if n, err := query(); err != nil || n != 42 {
		t.Fatalf("after restart: SELECT 6 * 7 = %d, %v\n%s", n, err, s.Log())
	}
}

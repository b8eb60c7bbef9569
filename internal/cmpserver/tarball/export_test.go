package tarball

import "time"

// SetRecycleMargin changes recycleMargin for a test.
func SetRecycleMargin(d time.Duration) (restore func()) {
	old := recycleMargin
	recycleMargin = d
	return func() { recycleMargin = old }
}

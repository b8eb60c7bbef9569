// Package browsertest tests strata cmp preview's page in a real browser:
// headless Chromium (Debian's chromium package) driven by chromedp. It is an
// integration package (the Makefile's INTEGRATION pattern): it needs the
// chromium binary, and fails without it when CI=true.
package browsertest

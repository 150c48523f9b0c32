// Package console tests the web console in a real browser: Debian's chromium,
// driven headless with chromedp, against the console served over a whole
// harness zone (quorum, primary and DR clusters with their controllers). The
// tests sign in with service-account tokens bound to viewer and operator
// roles, act through the pages, and save a screenshot of every screen to a
// folder they print.
package console

module netstick/workflow/harness/netemu

go 1.26.8

require golang.org/x/sys v0.48.0

module example.com/darwinprobe

go 1.26

require github.com/progrium/macdriver v0.5.0-preview

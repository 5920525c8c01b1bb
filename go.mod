module github.com/ingotml/ingot

go 1.26.0

require (
	github.com/chromedp/chromedp v0.23.1
	github.com/progrium/macdriver v0.5.0-preview
	github.com/stretchr/testify v1.12.1
	github.com/x448/float16 v0.8.4
	golang.org/x/text v0.44.0
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

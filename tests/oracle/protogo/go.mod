module appwatch.test/protogo

go 1.23

require google.golang.org/protobuf v1.36.12

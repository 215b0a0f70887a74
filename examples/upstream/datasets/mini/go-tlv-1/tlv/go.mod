module example.com/tlv

go 1.19

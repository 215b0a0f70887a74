module poc-tlv

go 1.19

require example.com/tlv v0.0.0

replace example.com/tlv => /src/tlv

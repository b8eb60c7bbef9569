package config

// EncodeData is encodeData, for the tests of package config_test.
var EncodeData = encodeData

package driver_test

// The driver's tests run on the CPU backend, the default interpreter, as
// programs do: by importing its registration.
import _ "github.com/pootlabs/poot/lower/cpu/register"

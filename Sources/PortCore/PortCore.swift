// PortCore: the one import of the library. It re-exports the layers a user
// of run loops, ports and the name server needs, so `import PortCore` is all
// a program writes; each layer is its own target below it, and the compiler
// keeps the arrows pointing down (docs/DESIGN.md, "Targets"):
//
//   PortSystem ← PortRunLoop ← PortMessaging ← PortNameClient ← PortCore
//   PortWire   ← PortMessaging, PortNameProtocol ← PortNameClient
//
// PortCore itself holds no code but these re-exports.

@_exported import PortMessaging
@_exported import PortNameClient
@_exported import PortNameProtocol
@_exported import PortRunLoop
@_exported import PortSystem
@_exported import PortWire

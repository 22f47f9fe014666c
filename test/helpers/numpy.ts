import { deflateRawSync } from 'node:zlib';

/**
 * Writes .npy bytes the way numpy.save does: a version 1.0 header (2-byte
 * length) padded to 64 bytes, or 2.0 (4-byte length) as NumPy writes for huge headers.
 */
export function npyBytes(descr: string, shape: number[], data: Uint8Array, fortran = false, version: 1 | 2 | 3 = 1): Buffer {
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  const dict = `{'descr': ${descr.startsWith('[') ? descr : `'${descr}'`}, 'fortran_order': ${fortran ? 'True' : 'False'}, 'shape': ${shapeText}, }`;
  // Format 3 is format 2 with a UTF-8 header; its length counts bytes.
  const encoding = version === 3 ? 'utf8' : 'latin1';
  const lengthBytes = version === 1 ? 2 : 4;
  const total = 8 + lengthBytes + Buffer.byteLength(dict, encoding) + 1;
  const header = dict + ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(8 + lengthBytes);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = version;
  head[7] = 0;
  if (version === 1) head.writeUInt16LE(Buffer.byteLength(header, encoding), 8);
  else head.writeUInt32LE(Buffer.byteLength(header, encoding), 8);
  return Buffer.concat([head, Buffer.from(header, encoding), Buffer.from(data)]);
}

const crcTable = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A minimal zip writer (stored or deflated entries), as numpy.savez / savez_compressed produce. */
export function zipBytes(entries: { name: string; data: Buffer }[], deflate: boolean): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const body = deflate ? deflateRawSync(e.data) : e.data;
    const name = Buffer.from(e.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(deflate ? 8 : 0, 8);
    local.writeUInt32LE(crc32(e.data), 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(e.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const cd = Buffer.alloc(46);
    cd.writeUInt32LE(0x02014b50, 0);
    cd.writeUInt16LE(20, 4);
    cd.writeUInt16LE(20, 6);
    cd.writeUInt16LE(deflate ? 8 : 0, 10);
    cd.writeUInt32LE(crc32(e.data), 16);
    cd.writeUInt32LE(body.length, 20);
    cd.writeUInt32LE(e.data.length, 24);
    cd.writeUInt16LE(name.length, 28);
    cd.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    central.push(cd, name);
    offset += 30 + name.length + body.length;
  }
  const cdBytes = Buffer.concat(central);
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(entries.length, 8);
  eocd.writeUInt16LE(entries.length, 10);
  eocd.writeUInt32LE(cdBytes.length, 12);
  eocd.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cdBytes, eocd]);
}

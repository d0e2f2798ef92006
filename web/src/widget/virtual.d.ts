/** The widget's .wasm, gzip-compressed and base64-encoded (web/widget.vite.config.ts). */
declare module 'virtual:qkscope-widget-wasm' {
  const base64: string;
  export default base64;
}

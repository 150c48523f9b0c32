import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The build goes where the Go binary embeds it (internal/console/ui/dist).
// Nothing is inlined as data: URIs or fetched from elsewhere, so the page
// runs under the console's strict Content-Security-Policy.
export default defineConfig({
  plugins: [react()],
  base: '/',
  build: {
    outDir: '../../internal/console/ui/dist',
    emptyOutDir: false,
    assetsInlineLimit: 0,
    sourcemap: false,
    chunkSizeWarningLimit: 2000,
  },
});

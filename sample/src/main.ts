import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  console.log(`nestjs-redis-lock sample listening on http://localhost:${port} (try GET /locks/demo)`);
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

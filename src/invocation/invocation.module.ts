import { Module } from '@nestjs/common';
import { StatelessInvokerService } from './stateless-invoker.service';

@Module({ providers: [StatelessInvokerService], exports: [StatelessInvokerService] })
export class InvocationModule {}
